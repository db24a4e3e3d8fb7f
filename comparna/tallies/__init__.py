"""Small precomputed tables the public pages read instead of counting the predictions table (issue 28)."""
