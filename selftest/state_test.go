package selftest

import "testing"

// A State slot gives back what was set, of its own type, and nothing when
// the setup never set it or set something else under the key.
func TestStateSlot(t *testing.T) {
	env := &Env{}
	type rack struct{ n int }
	s := State[*rack]{Key: "design"}
	if _, ok := s.Get(env); ok {
		t.Fatal("a slot never set gives a value")
	}
	s.Set(env, &rack{n: 3})
	if r, ok := s.Get(env); !ok || r.n != 3 {
		t.Fatalf("Get after Set: %v, %v", r, ok)
	}
	env.Shared["other"] = 7
	if _, ok := (State[*rack]{Key: "other"}).Get(env); ok {
		t.Error("a slot whose key holds another type gives a value")
	}
}
