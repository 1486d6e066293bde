"""robotd: the robot daemon. One robot (or any handler) per OS process on the bus."""
