"""Leader-elected periodic tasks: the clean-up tasks only enqueue; workers do the work."""
