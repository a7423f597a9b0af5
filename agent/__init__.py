"""runner-agent: health readings from a CI runner, delivered to the controller without loss."""
