"""The HA PXE firewall: the desired state (rules), the drivers that apply it, the commands
they run; the manager decides, on the elected leader only, when the PXE port opens."""
