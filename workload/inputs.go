package workload

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
	"github.com/mailbench/mailbench/measure"
)

// Upper bounds of the values that size a run. Validate, ParseConfig and
// CheckInputs reject a value above its bound, naming the bound, before any
// work starts: such a value would overflow a computation or exhaust memory
// rather than describe a real run. The bounds are far above real use (a
// sizing run of 100,000 users and tens of millions of sessions per hour
// passes).
const (
	// MaxUsers bounds users.count and the users listed in users.file.
	MaxUsers = 10_000_000
	// MaxSessionsPerHour bounds load.sessions_per_hour,
	// load.sessions_per_user_hour and the rate they derive,
	// users.count × load.sessions_per_user_hour.
	MaxSessionsPerHour = 1e9
	// MaxConcurrentSessions bounds load.max_concurrent_sessions.
	MaxConcurrentSessions = 1_000_000
	// MaxInboundPerSession bounds load.inbound_per_session.
	MaxInboundPerSession = 1000
	// MinResponseBytes and MaxResponseBytes bound load.max_response_bytes
	// and load.max_literal_bytes: below 4 KiB a real server's capability
	// list or SEARCH result would not fit; above 1 GiB the bound no longer
	// protects the generator's memory.
	MinResponseBytes = 4 << 10
	MaxResponseBytes = 1 << 30

	// MinOpTimeout bounds load.op_timeout from below: a deadline a real
	// round trip (a TCP connect and a login on a loaded server) can meet.
	MinOpTimeout = 10 * time.Millisecond
	// MaxThinkTime bounds load.think_time, the mean pause between steps.
	MaxThinkTime = time.Hour
	// MaxPhase bounds each of phases.warmup, measurement, rampdown and
	// settle.
	MaxPhase = 30 * 24 * time.Hour
	// MaxMailboxMessages bounds mailboxes.inbox_messages,
	// folder_messages_min and folder_messages_max (messages per mailbox and
	// user), and sessions.*.fetch_count.
	MaxMailboxMessages = 100_000
	// MaxFolders bounds the length of mailboxes.folders.
	MaxFolders = 1000
	// MaxBodies bounds sessions.read.bodies_max, the bodies one read
	// session fetches.
	MaxBodies = 1000
	// MaxMessageSize bounds messages.sizes[].size.
	MaxMessageSize = 256 * MiB
	// MaxWeight bounds sessions.*.weight (weights are relative).
	MaxWeight = 1e6
	// MaxConfigBytes bounds the size of a config file.
	MaxConfigBytes = 1 << 20
)

// maxPEMBytes bounds a ca_file, cert_file or key_file.
const maxPEMBytes = 16 << 20

// CheckInputs checks everything a run of c reads beyond its values before
// any work starts, so that `mailbench check` and `mailbench run` refuse
// the same inputs up front. The values themselves Load validated, with
// their overrides, once; a config changed in code is Validate's. It checks:
//   - users.file: a regular file (not a directory or a FIFO) that can be
//     read and parses as LoadUsers parses it: at least one user, no user
//     twice, no more than MaxUsers;
//   - without users.file, the password: users.password_env names a
//     variable that is set and non-empty, or users.password is set (the
//     error names the variable, never a value);
//   - ca_file of target.imap, target.smtp and target.inbound when their TLS
//     is on and the target is not embedded: a readable regular file holding
//     at least one PEM certificate;
//   - sink.cert_file and sink.key_file when the sink runs with TLS: readable
//     regular files holding a matching certificate and key.
//
// The error, when not nil, is a ConfigErrors holding every problem found:
// those of the config file first, each naming its file:line and key when
// the file sets it, then those of the users file, each naming that file's
// line. No error contains a password. It reads those files and the
// environment; it doesn't connect anywhere.
func (c *Config) CheckInputs() error {
	var errs ConfigErrors
	var usersErrs ConfigErrors
	if c.Users.File != "" {
		if _, err := c.LoadUsers(); err != nil {
			var ces ConfigErrors
			var ce *ConfigError
			switch {
			case errors.As(err, &ces):
				usersErrs = ces
			case errors.As(err, &ce) && ce.File == c.File:
				errs = append(errs, ce)
			case errors.As(err, &ce):
				usersErrs = ConfigErrors{ce}
			default:
				errs = append(errs, c.keyError(tomlstrict.PathOf("users", "file"), "%v", err))
			}
		}
	} else if _, err := c.Password(); err != nil {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			ce = c.keyError(tomlstrict.PathOf("users"), "%v", err)
		}
		errs = append(errs, ce)
	}
	if !c.Target.Embedded {
		eps := []struct {
			name string
			ep   Endpoint
		}{{"imap", c.Target.IMAP}, {"smtp", c.Target.SMTP}}
		if c.Target.Inbound.TLS != "" {
			// Otherwise it takes target.smtp's TLS settings, checked above.
			eps = append(eps, struct {
				name string
				ep   Endpoint
			}{"inbound", c.Target.Inbound})
		}
		for _, e := range eps {
			if tlsOn(e.ep.TLS) && e.ep.CAFile != "" {
				if msg := checkCAFile(e.ep.CAFile); msg != "" {
					errs = append(errs, c.keyError(tomlstrict.PathOf("target", e.name, "ca_file"), "%s", msg))
				}
			}
		}
	}
	if s := c.Sink; s.Enabled && tlsOn(s.TLS) && s.CertFile != "" && s.KeyFile != "" {
		cert, err1 := readInput(s.CertFile, maxPEMBytes)
		if err1 != nil {
			errs = append(errs, c.keyError(tomlstrict.PathOf("sink", "cert_file"), "%s: %v", s.CertFile, err1))
		}
		key, err2 := readInput(s.KeyFile, maxPEMBytes)
		if err2 != nil {
			errs = append(errs, c.keyError(tomlstrict.PathOf("sink", "key_file"), "%s: %v", s.KeyFile, err2))
		}
		if err1 == nil && err2 == nil {
			if _, err := tls.X509KeyPair(cert, key); err != nil {
				errs = append(errs, c.keyError(tomlstrict.PathOf("sink", "cert_file"), "%s with key_file %s: %v", s.CertFile, s.KeyFile, err))
			}
		}
	}
	if len(errs) == 0 && len(usersErrs) == 0 {
		return nil
	}
	out := sortErrors(errs)
	return append(out, usersErrs...)
}

// tlsOn reports whether a tls setting ("none", "starttls", "implicit")
// turns TLS on.
func tlsOn(mode measure.TLSMode) bool { return mode != "" && mode != measure.TLSNone }

// checkCAFile says what is wrong with the CA file at path, as tlsconf
// would load it, or returns "".
func checkCAFile(path string) string {
	data, err := readInput(path, maxPEMBytes)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return fmt.Sprintf("%s: no PEM certificate in it", path)
	}
	return ""
}

// openInput opens the regular file at path for reading. Its errors don't
// repeat the path: "no such file", "is a directory, not a file", "is not
// a regular file", "cannot be read: permission denied". It does not block
// on a FIFO: it refuses one before opening it.
func openInput(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, describeFileError(err)
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, describeFileError(err)
	}
	// The path may have changed between Stat and Open.
	if st, err = f.Stat(); err != nil || regular(st) != nil {
		f.Close()
		if err == nil {
			err = regular(st)
		}
		return nil, describeFileError(err)
	}
	return f, nil
}

func regular(st fs.FileInfo) error {
	switch {
	case st.IsDir():
		return errors.New("is a directory, not a file")
	case !st.Mode().IsRegular():
		return errors.New("is not a regular file")
	}
	return nil
}

// readInput reads the regular file at path, at most max bytes of it:
// a longer file is an error.
func readInput(path string, max int) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, describeFileError(err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("larger than the maximum of %d bytes", max)
	}
	return data, nil
}

// describeFileError renders err of a file operation without the path.
func describeFileError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("cannot be read: permission denied")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot be read: %v", pe.Err)
	}
	return err
}
