"""The processes robot-to supervises: the iteration robot, the judge, and gate commands."""
