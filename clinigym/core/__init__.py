"""The typed core, without I/O: actions, geometry and the coordinate contract, the hit
rule and failure taxonomy, the recording schema, errors, timings, the agent context."""
