package framework

import (
	"time"

	. "github.com/onsi/gomega"
)

// SetSuiteDefaults gives the tenant suites the same Gomega timing: worlds
// and bootstraps take seconds, not the library's default one second.
func SetSuiteDefaults() {
	// An Eventually given a context has no timeout of its own otherwise.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(250 * time.Millisecond)
}
