"""Dataset snapshots: ``archive`` (pure: writing and verifying archives) and ``service`` (Django)."""
