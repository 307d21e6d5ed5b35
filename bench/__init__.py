"""`make bench` (python -m bench): numbers with targets, measured on the local stack. Not part of `make test`."""
