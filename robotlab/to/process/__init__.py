"""Processes under supervision: gate commands and forked children, each in its own group."""
