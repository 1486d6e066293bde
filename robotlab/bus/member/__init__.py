"""A member's side of the bus: its client, the connection behind it, and what it keeps.

Read :mod:`robotlab.bus.member.client` first; ``robotlab.bus`` re-exports its public names. The
frames it sends and receives are :mod:`robotlab.bus.wire`'s.
"""
