package orchestrator

import (
	"fmt"
)

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

func itoa(n int64) string { return fmt.Sprint(n) }
