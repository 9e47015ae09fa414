package wiring

// testNS is the namespace of the tests' objects.
const testNS = "team-a"
