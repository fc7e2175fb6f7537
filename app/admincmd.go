package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
)

const adminHelp = `
create          create an admin account (works while 'kimi serve' runs)
reset-password  set a new password for an admin and sign out all its sessions

The password is read, in order, from --password-file, --password-stdin,
KIMI_ADMIN_PASSWORD / KIMI_ADMIN_PASSWORD_FILE, or an interactive prompt
without echo when stdin is a terminal. There is deliberately no --password
flag: it would land in shell history and the process list.
The username comes from --username, else KIMI_ADMIN_USERNAME, else "admin".`

// cliActor is the audit actor of changes made through the command line.
const cliActor = "cli"

func runAdmin(ctx context.Context, c *cli, args []string) error {
	var (
		username, passwordFile string
		passwordStdin          bool
	)
	cfg, logger, pos, err := c.setup("admin", args, func(fs *flag.FlagSet) {
		fs.StringVar(&username, "username", "", "admin username (default KIMI_ADMIN_USERNAME or admin)")
		fs.StringVar(&passwordFile, "password-file", "", "read the password from this file (trailing newline trimmed)")
		fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	})
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "create" && pos[0] != "reset-password") {
		return usageError("expected 'create' or 'reset-password'")
	}
	if passwordFile != "" && passwordStdin {
		return usageError("use either --password-file or --password-stdin, not both")
	}
	if username == "" {
		username = cfg.AdminUsername
	}
	if err := auth.ValidateUsername(username); err != nil {
		return err
	}
	password, err := c.adminPassword(cfg, passwordFile, passwordStdin, username)
	if err != nil {
		return err
	}
	if err := auth.ValidatePassword(username, password); err != nil {
		return err
	}
	if err := ensureDataDir(cfg.DataDir, appLogger(logger)); err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	// A fresh data directory is migrated here so `kimi admin create` can run
	// before the first `kimi serve` (provisioning scripts). Changing the
	// schema needs the lock, like `kimi migrate up`: never under a running
	// (older) server. A current schema needs no lock, so this works while
	// the server runs.
	cur, latest, err := st.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if cur < latest {
		lock, err := store.AcquireLock(cfg.DBPath())
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	rep, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if rep.BackupPath != "" {
		fmt.Fprintf(c.stderr, "pre-migration backup: %s\n", rep.BackupPath)
	}
	svc := auth.New(st, logger.With("component", "auth"), auth.Options{})
	if pos[0] == "create" {
		if err := svc.CreateAdmin(ctx, username, password, cliActor); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "admin %q created\n", username)
		return nil
	}
	if err := svc.ResetPassword(ctx, username, password, cliActor); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "password of %q reset; all of its sessions were signed out\n", username)
	return nil
}

// adminPassword finds the new password from the flags, the environment or
// an interactive prompt, in that order.
func (c *cli) adminPassword(cfg config.Config, file string, fromStdin bool, username string) (string, error) {
	switch {
	case file != "":
		b, err := c.env.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		return nonEmpty("--password-file", strings.TrimRight(string(b), "\r\n"))
	case fromStdin:
		line, err := bufio.NewReader(c.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--password-stdin: %w", err)
		}
		return nonEmpty("--password-stdin", strings.TrimRight(line, "\r\n"))
	case cfg.AdminPassword != "":
		return cfg.AdminPassword.Reveal(), nil
	case c.stdinTerminal():
		fmt.Fprintf(c.stderr, "New password for %s: ", username)
		first, err := c.readPassword()
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprintf(c.stderr, "Repeat the password: ")
		second, err := c.readPassword()
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if first != second {
			return "", auth.ErrPasswordsDoNotMatch
		}
		return nonEmpty("password", first)
	}
	return "", usageError("no password given: use --password-file, --password-stdin, KIMI_ADMIN_PASSWORD(_FILE), or run in a terminal to be prompted")
}

func nonEmpty(source, v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("%s: the password is empty", source)
	}
	return v, nil
}

// isTerminal reports whether f is an interactive terminal.
func isTerminal(f *os.File) bool {
	_, err := getTermios(int(f.Fd()))
	return err == nil
}

// readPasswordNoEcho reads one line from the terminal f with echo turned off,
// restoring the terminal state afterwards.
func readPasswordNoEcho(f *os.File) (string, error) {
	fd := int(f.Fd())
	old, err := getTermios(fd)
	if err != nil {
		return "", err
	}
	noEcho := *old
	disableEcho(&noEcho)
	if err := setTermios(fd, &noEcho); err != nil {
		return "", err
	}
	defer setTermios(fd, old) //nolint:errcheck // best effort restore
	var b []byte
	buf := make([]byte, 1)
	for {
		n, err := f.Read(buf)
		if n == 1 {
			if buf[0] == '\n' || buf[0] == '\r' {
				break
			}
			b = append(b, buf[0])
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(b) > 0 {
				break
			}
			return "", err
		}
	}
	return string(b), nil
}
