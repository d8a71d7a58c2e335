"""Sub-commands of the ``bgsub`` command line (see :mod:`bgsub.cli`)."""
