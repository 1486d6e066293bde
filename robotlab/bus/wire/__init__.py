"""What crosses a member's socket: the frames, their vocabulary and the plain data a body holds.

Read :mod:`robotlab.bus.wire.protocol` first. Nothing here keeps a member's state or imports the
rest of the bus: a member's client and the broker both build on it.
"""
