package drivers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestClassOf(t *testing.T) {
	expired, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-expired.Done()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	cases := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, 0},
		{"unclassified", errors.New("wrong value"), ClassDesign},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), ClassInfra},
		{"driver timeout", fmt.Errorf("console: %w", ErrTimeout), ClassInfra},
		{"stalled poll", Stalled(expired, "waiting for TG_STATUS"), ClassDesign},
		{"stalled wrapped in a timeout message", fmt.Errorf("%w: %w", ErrTimeout, ErrStalled), ClassDesign},
		{"explicit design", Design("b", "op", "", errors.New("x")), ClassDesign},
		{"infra wins over a stall inside", Infra("b", "op", "", Stalled(expired, "x")), ClassInfra},
		{"setup", Setup("b", "op", "", errors.New("x")), ClassSetup},
	}
	for _, c := range cases {
		if got := ClassOf(c.err); got != c.want {
			t.Errorf("%s: ClassOf(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	// A cancelled run is not a stall: it says it was cancelled.
	if err := Stalled(cancelled, "waiting"); errors.Is(err, ErrStalled) || !errors.Is(err, context.Canceled) {
		t.Errorf("Stalled on a cancelled context = %v, want the cancellation", err)
	}
}
