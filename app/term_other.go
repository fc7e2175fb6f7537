//go:build !linux

package app

import "errors"

// termios stands in for the terminal state on systems where the prompt is
// not implemented; use --password-file or --password-stdin there.
type termios struct{}

var errNoTerminal = errors.New("interactive password prompt not supported on this system; use --password-file or --password-stdin")

func getTermios(int) (*termios, error) { return nil, errNoTerminal }

func setTermios(int, *termios) error { return errNoTerminal }

func disableEcho(*termios) {}
