package workload

import (
	"fmt"
	"time"
)

// Overrides are values given beside a config file (the command line's
// --users, --measurement and --rate), laid over the file's values after
// decoding and before the one validation, so that what is validated is
// what runs. A nil field was not given. A problem with an overridden
// value names the override (its Source), not the file's line; Where does
// too.
type Overrides struct {
	Users           *int           // users.count
	Measurement     *time.Duration // phases.measurement
	SessionsPerHour *float64       // load.sessions_per_hour
}

// overrideSources name each override in errors and in Where, as the
// commands that give them spell them.
var overrideSources = map[string]string{
	"users.count":            "--users",
	"phases.measurement":     "--measurement",
	"load.sessions_per_hour": "--rate",
}

// apply lays o over c and records which keys it set. Its errors are the
// overrides that contradict the file: users from a users file, a rate for
// a config whose load is a [population]'s users.
func (o Overrides) apply(c *Config) ConfigErrors {
	var errs ConfigErrors
	set := func(key string) {
		if c.overridden == nil {
			c.overridden = map[string]string{}
		}
		c.overridden[key] = overrideSources[key]
	}
	if o.Users != nil {
		if c.Users.File != "" {
			errs = append(errs, &ConfigError{File: overrideSources["users.count"], Msg: fmt.Sprintf("%s takes its users from %s", c.File, c.Users.File)})
		} else {
			c.Users.Count = *o.Users
			set("users.count")
		}
	}
	if o.Measurement != nil {
		c.Phases.Measurement.Duration = *o.Measurement
		set("phases.measurement")
	}
	if o.SessionsPerHour != nil {
		if c.HasPopulation() {
			errs = append(errs, &ConfigError{File: overrideSources["load.sessions_per_hour"], Msg: fmt.Sprintf("%s describes its load as users of a [population] mix: set how many with --users (or population.users)", c.File)})
		} else {
			c.Load.SessionsPerHour = *o.SessionsPerHour
			set("load.sessions_per_hour")
		}
	}
	return errs
}
