"""Tier-1 checks (paper 3.1.1): deterministic checkers that each decide one kind of thing in a node."""
