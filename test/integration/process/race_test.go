//go:build race

package process

// raceEnabled: under go test -race the binary is built with the race
// detector too, so a data race in the process (on SIGTERM, in leader
// election) fails the test instead of passing unseen.
const raceEnabled = true
