//go:build race

package main

// raceEnabled builds the binary under test with the race detector when the
// tests run with it: the command's goroutines are checked as well.
const raceEnabled = true
