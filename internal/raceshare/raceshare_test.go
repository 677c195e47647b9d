package raceshare

import "testing"

func TestRotationIsReadOncePerProcess(t *testing.T) {
	t.Setenv(EnvRotation, "") // the day number
	a := Rotation(t)
	t.Setenv(EnvRotation, "7")
	if b := Rotation(t); b != a {
		t.Errorf("rotation changed within one process: %d then %d", a, b)
	}
}

func TestCases(t *testing.T) {
	cases := []int{10, 20, 30}
	got := Cases(t, cases)
	if !Enabled {
		if len(got) != 3 {
			t.Errorf("without the race detector: %v, want every case", got)
		}
		return
	}
	if len(got) != 1 || got[0] != cases[Rotation(t)%3] {
		t.Errorf("under the race detector: %v, want case %d", got, Rotation(t)%3)
	}
	if One(t, cases) != got[0] {
		t.Errorf("One and Cases disagree")
	}
}

func TestPrefix(t *testing.T) {
	got := Prefix(t, 3000, 5)
	if !Enabled && got != 3000 || Enabled && got != 600 {
		t.Errorf("Prefix(3000, 5) = %d with the race detector %v", got, Enabled)
	}
	if got := Prefix(t, 3, 5); got < 1 {
		t.Errorf("Prefix(3, 5) = %d, want at least 1", got)
	}
}
