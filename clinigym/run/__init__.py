"""Running agents over scenarios (`runner`) and measuring the environments (`bench`)."""
