"""The files that define tasks: programs (`apps`), scenarios, conditions (a registry of
kinds, each with its own check), MedSPOT datasets, the search path (`paths`) and the
YAML loading with errors that name the file, the field and the problem (`files`)."""
