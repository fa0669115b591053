"""Memory construction: dialogue windows -> atomic units -> traces (`qgmem.construct.build`)."""
