"""Results in SQLite, with a versioned schema: the only code that reads or writes the database.

* :mod:`cpustudy.store.schema`: the tables, their migrations (one function per version), and the check
  that tells a cpustudy database from other files.
* :mod:`cpustudy.store.store`: :class:`Store`, the only writer of the database.
* :mod:`cpustudy.store.known`: :class:`Known`, what a comparison being measured holds of the database (read once,
  then run by run), and :class:`Readable`, what runs can be read from (a :class:`Store` or a :class:`Known`).
* :mod:`cpustudy.store.snapshot`: consistent copies of a live database, for jobs that can be cut at any
  moment (spot VMs).
* :mod:`cpustudy.store.importers`: results from elsewhere (the 2017 study's logs, another cpustudy
  database), written through :class:`Store`. Imported on demand, not from here.
"""

from cpustudy.store.known import Known, Readable
from cpustudy.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from cpustudy.store.store import Store, default_path, now, row_id

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "Known", "Readable", "Store", "default_path", "now",
           "row_id"]
