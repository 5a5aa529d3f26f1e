"""file:///path (tooz's file driver): processes of one host.

Features: locks are fcntl locks on files under the path, released by the kernel when
their process dies; groups are files too. Options: none of
ours. Requires: nothing.
"""

from inspector.coordination.drivers.common import ToozCoordinator


class FileCoordinator(ToozCoordinator):
    is_single_host = True
