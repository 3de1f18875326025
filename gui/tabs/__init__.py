"""The four tabs. Each is a view of the one scenario: inputs on the left, live charts and
the section's figures on the right."""
