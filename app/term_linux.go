//go:build linux

package app

import "golang.org/x/sys/unix"

// termios is the terminal state saved and restored around a password prompt.
type termios = unix.Termios

func getTermios(fd int) (*termios, error) { return unix.IoctlGetTermios(fd, unix.TCGETS) }

func setTermios(fd int, t *termios) error { return unix.IoctlSetTermios(fd, unix.TCSETS, t) }

// disableEcho keeps line editing and signals (Ctrl-C still works) but hides
// what is typed.
func disableEcho(t *termios) {
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	t.Iflag |= unix.ICRNL
}
