package health

// Active is the active-probe state of one replica. The zero value is not
// usable; build one with NewActive. Not safe for concurrent use.
type Active struct {
	rise, fall int
	up         bool
	// streak counts the results in a row that disagree with the state.
	streak int
}

// NewActive returns the state of a replica that is up until fall probes in
// a row fail. rise and fall below 1 count as 1.
func NewActive(rise, fall int) Active {
	return Active{rise: max(rise, 1), fall: max(fall, 1), up: true}
}

// Result feeds one probe result and reports whether the state changed.
func (a *Active) Result(ok bool) (changed bool) {
	if ok == a.up {
		a.streak = 0
		return false
	}
	a.streak++
	need := a.fall
	if !a.up {
		need = a.rise
	}
	if a.streak < need {
		return false
	}
	a.up = ok
	a.streak = 0
	return true
}

// Up reports whether the replica is up.
func (a *Active) Up() bool { return a.up }

// State is Up or Down.
func (a *Active) State() string {
	if a.up {
		return Up
	}
	return Down
}

// SetThresholds changes rise and fall (below 1 counts as 1), keeping the
// state and the current streak.
func (a *Active) SetThresholds(rise, fall int) {
	a.rise, a.fall = max(rise, 1), max(fall, 1)
}
