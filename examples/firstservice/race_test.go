//go:build race

package main

// raceEnabled builds the program under test with the race detector when
// the tests run with it: its goroutines are checked as well, and its
// packages come from the build cache the test binary filled.
const raceEnabled = true
