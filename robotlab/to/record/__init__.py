"""What a run leaves and shows: notes.md, run.log, run.json writes, decisions, status, summary."""
