package workload_test

import (
	"fmt"

	"github.com/mailbench/mailbench/workload"
)

// A config is decoded over the defaults and validated; every problem is
// reported with its file and line.
func ExampleParseConfig() {
	_, err := workload.ParseConfig("typo.toml", []byte(`
name = "typo"
[target]
embedded = true
[load]
sessions_per_houre = 3600
`))
	fmt.Println(err)
	// Output:
	// typo.toml:6: load.sessions_per_houre: unknown key (did you mean "sessions_per_hour"?)
}

// The plan is what a config means: the session mix, the expected load by
// Little's law, the compliance rows.
func ExampleNewPlan() {
	cfg, err := workload.ParseConfig("small.toml", []byte(`
name = "small"
[target]
embedded = true
[users]
count = 100
[load]
sessions_per_hour = 3600
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %.0f sessions/hour over %d users\n", plan.Name, plan.SessionsPerHour, plan.Users)
	for _, s := range plan.Mix {
		fmt.Printf("  %-8s %3.0f%% %5.0f/hour, %d timed functions\n", s.Type, s.Percent, s.SessionsPerHour, len(s.Functions))
	}
	// Output:
	// small: 3600 sessions/hour over 100 users
	//   check     35%  1260/hour, 3 timed functions
	//   read      25%   900/hour, 4 timed functions
	//   cleanup   10%   360/hour, 5 timed functions
	//   folders   10%   360/hour, 5 timed functions
	//   send      20%   720/hour, 4 timed functions
}
