"""In-repo fakes of the services we talk to, for unit tests of the modules that use them."""
