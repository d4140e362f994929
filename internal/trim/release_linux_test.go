package trim

import "testing"

func TestReleaseSelfDropsExecutablePages(t *testing.T) {
	res, err := releaseSelf()
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped == 0 {
		t.Fatal("no mapping of the test binary was found droppable")
	}
	if res.After >= res.Before {
		t.Fatalf("resident set did not shrink: %d → %d bytes", res.Before, res.After)
	}
}
