//go:build !unix

package browsertest

import "os/exec"

// ownGroup: without process groups, the timeout kills Chromium itself only.
func ownGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
