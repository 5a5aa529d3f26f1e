"""The HTTP API (Flask): ironic-inspector's v1 contract. Only this package imports Flask."""
