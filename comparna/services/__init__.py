"""Services: the only place where ORM objects and the pure core meet (ARCHITECTURE.md)."""
