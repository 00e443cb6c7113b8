"""CI support: which harnesses a change affects, and the P0 check built from probe outputs."""
