"""The shared Postgres: the embedded server or DATABASE_URL, migrations, and the connection pool."""

from secondbrain.db.database import Database

__all__ = ["Database"]
