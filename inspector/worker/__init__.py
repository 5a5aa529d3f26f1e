"""The worker: a pool of threads taking transition requests and advancing nodes one step."""
