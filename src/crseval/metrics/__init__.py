"""Session metrics: grounded TAS, legacy CAS, topic adherence, response statistics."""
