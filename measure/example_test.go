package measure_test

import (
	"errors"
	"fmt"

	"github.com/mailbench/mailbench/measure"
)

// Every failed operation falls into one class; the compliance table
// counts errors by class.
func ExampleClassify() {
	fmt.Printf("%q\n", measure.Classify(nil))
	fmt.Println(measure.Classify(measure.ErrTimeout))
	fmt.Println(measure.Classify(&measure.ProtocolError{Op: "SELECT", Reply: "NO [NONEXISTENT] Unknown Mailbox"}))
	fmt.Println(measure.Classify(errors.New("something else")))
	// Output:
	// ""
	// timeout
	// protocol
	// other
}

// An Observer receives one Observation per timed operation.
func ExampleObserverFunc() {
	var n int
	obs := measure.ObserverFunc(func(o measure.Observation) {
		if o.Class == measure.OK {
			n++
		}
	})
	obs.Observe(measure.Observation{Function: measure.IMAPSelectInbox})
	fmt.Println(n)
	// Output: 1
}
