"""The fleet benchmark: our service, ironic-inspector 12.5.0 and the Ironic
floor, side by side on a real Ironic."""
