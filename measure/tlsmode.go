package measure

// TLSMode is how a connection is secured: the config's tls keys and both
// clients' Config.TLS are of this one type. It is a plain string in TOML;
// the config's validation checks it, with the file's other problems.
type TLSMode string

// The TLS modes.
const (
	TLSNone     TLSMode = "none"     // plain TCP
	TLSStartTLS TLSMode = "starttls" // clear-text greeting, STARTTLS, handshake
	TLSImplicit TLSMode = "implicit" // handshake right after the TCP connect (IMAPS 993, SMTPS 465)
)

// TLSModes are the modes, in the order messages list them.
var TLSModes = []TLSMode{TLSNone, TLSStartTLS, TLSImplicit}
