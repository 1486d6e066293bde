"""Processes under supervision: process groups killed whole, gate commands, forked children."""
