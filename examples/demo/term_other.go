//go:build !linux

package main

import "os"

// isTerminal reports whether f looks like a terminal: a character device.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// termWidth returns the terminal's width in columns: unknown here.
func termWidth(*os.File) int { return 0 }
