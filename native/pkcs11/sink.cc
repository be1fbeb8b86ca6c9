#include "pkcs11/sink.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace qe::pkcs11 {

const char* slot_status_name(SlotStatus s) {
  switch (s) {
    case SlotStatus::Active: return "active";
    case SlotStatus::Reconnecting: return "reconnecting";
    case SlotStatus::Unsupported: return "unsupported";
    case SlotStatus::LoginRefused: return "login-refused";
  }
  return "unknown";
}

Verdict classify(ck::RV rv) {
  switch (rv) {
    case ck::CKR_OK:
      return Verdict::Ok;
    case ck::CKR_RANDOM_SEED_NOT_SUPPORTED:
    case ck::CKR_FUNCTION_NOT_SUPPORTED:
    case ck::CKR_RANDOM_NO_RNG:
      return Verdict::Unsupported;
    case ck::CKR_SESSION_HANDLE_INVALID:
    case ck::CKR_SESSION_CLOSED:
    case ck::CKR_DEVICE_REMOVED:
    case ck::CKR_TOKEN_NOT_PRESENT:
    case ck::CKR_TOKEN_NOT_RECOGNIZED:
    case ck::CKR_SLOT_ID_INVALID:
    case ck::CKR_USER_NOT_LOGGED_IN:
    case ck::CKR_CRYPTOKI_NOT_INITIALIZED:
      return Verdict::SessionLost;
    case ck::CKR_PIN_INCORRECT:
    case ck::CKR_PIN_INVALID:
    case ck::CKR_PIN_LEN_RANGE:
    case ck::CKR_PIN_EXPIRED:
    case ck::CKR_PIN_LOCKED:
    case ck::CKR_USER_PIN_NOT_INITIALIZED:
      return Verdict::LoginRefused;
    default:
      return Verdict::Error;
  }
}

namespace {

void wipe_string(std::string& s) {
  if (!s.empty()) explicit_bzero(s.data(), s.size());
  s.clear();
}

}  // namespace

Sink::Sink(SinkConfig config) : config_(std::move(config)) {
  if (config_.token_label.empty()) throw std::invalid_argument("a PKCS#11 sink needs a token label");
  if (config_.token_label.size() > 32) throw std::invalid_argument("PKCS#11 token labels are at most 32 bytes");
  module_ = std::make_unique<Module>(config_.module_path);
  const std::vector<TokenInfo> tokens = module_->tokens();
  std::string present;
  for (const TokenInfo& t : tokens) {
    if (t.label == config_.token_label) {
      Slot s;
      s.state.slot = t.slot;
      s.state.label = t.label;
      slots_.push_back(std::move(s));
    } else {
      present += (present.empty() ? "'" : ", '") + t.label + "'";
    }
  }
  if (slots_.empty())
    throw std::runtime_error("no token labelled '" + config_.token_label + "' in PKCS#11 module " +
                             config_.module_path +
                             (present.empty() ? " (it reports no token present)" : " (tokens present: " + present + ")"));
  for (Slot& s : slots_) {
    const ck::RV rv = open_slot(s);
    if (rv == ck::CKR_OK) continue;
    if (classify(rv) == Verdict::LoginRefused) {
      const std::string msg = "C_Login on " + slot_name(s) + " refused the configured PIN";
      close();
      throw Pkcs11Error("C_Login", rv, msg);
    }
    // Anything else is transient from here on: the slot reconnects on its next seed.
    s.state.status = SlotStatus::Reconnecting;
    s.state.last_rv = rv;
    s.state.last_error = "C_OpenSession/C_Login on " + slot_name(s) + ": " + rv_name(rv);
    ++s.state.errors;
  }
}

Sink::~Sink() {
  close();
  if (config_.pin) wipe_string(*config_.pin);
}

std::string Sink::slot_name(const Slot& slot) const {
  return "token '" + slot.state.label + "' (slot " + std::to_string(slot.state.slot) + ") of " + config_.module_path;
}

ck::RV Sink::open_slot(Slot& slot) {
  ck::SESSION_HANDLE h = 0;
  ck::RV rv = module_->open_session(slot.state.slot, &h);
  if (rv != ck::CKR_OK) return rv;
  if (config_.pin) {
    rv = module_->login_user(h, *config_.pin);
    // Login state belongs to the application, not the session: a second session on a
    // token we already logged in to is logged in as well.
    if (rv != ck::CKR_OK && rv != ck::CKR_USER_ALREADY_LOGGED_IN) {
      module_->close_session(h);
      return rv;
    }
  }
  slot.session = h;
  slot.has_session = true;
  slot.state.status = SlotStatus::Active;
  return ck::CKR_OK;
}

void Sink::drop_session(Slot& slot) {
  if (slot.has_session) module_->close_session(slot.session);  // best effort; it may be gone
  slot.has_session = false;
  slot.session = 0;
}

bool Sink::rebind(Slot& slot) {
  std::vector<ck::SLOT_ID> candidates;
  try {
    candidates = module_->find_slots(config_.token_label);
  } catch (const Pkcs11Error&) {
    return false;
  }
  for (ck::SLOT_ID id : candidates) {
    bool taken = false;
    for (const Slot& other : slots_)
      if (&other != &slot && other.state.slot == id) taken = true;
    if (!taken) {
      slot.state.slot = id;
      return true;
    }
  }
  return false;
}

size_t Sink::slot_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_.size();
}

std::vector<SlotState> Sink::slots() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SlotState> out;
  for (const Slot& s : slots_) out.push_back(s.state);
  return out;
}

SeedResult Sink::apply(size_t index, ck::RV rv, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= slots_.size()) throw std::out_of_range("no PKCS#11 slot with index " + std::to_string(index));
  return apply_locked(index, rv, size);
}

SeedResult Sink::apply_locked(size_t index, ck::RV rv, size_t size) {
  Slot& slot = slots_.at(index);
  SeedResult r;
  r.rv = rv;
  slot.state.last_rv = rv;
  switch (classify(rv)) {
    case Verdict::Ok:
      r.ok = true;
      ++slot.state.seed_calls;
      slot.state.bytes_seeded += size;
      slot.state.status = SlotStatus::Active;
      return r;
    case Verdict::Unsupported:
      slot.state.status = SlotStatus::Unsupported;
      drop_session(slot);
      r.newly_unsupported = !slot.reported_unsupported;
      slot.reported_unsupported = true;
      r.message = slot_name(slot) + " does not accept seeds (C_SeedRandom: " + rv_name(rv) +
                  "); it will not be seeded again";
      break;
    case Verdict::SessionLost:
      slot.state.status = SlotStatus::Reconnecting;
      drop_session(slot);
      r.message = "C_SeedRandom on " + slot_name(slot) + ": " + rv_name(rv) + "; the session will be reopened";
      break;
    case Verdict::LoginRefused:
      slot.state.status = SlotStatus::LoginRefused;
      drop_session(slot);
      r.message = "C_Login on " + slot_name(slot) + ": " + rv_name(rv) +
                  "; the slot is left alone until the PIN is reconfigured";
      break;
    case Verdict::Error:
      r.message = "C_SeedRandom on " + slot_name(slot) + ": " + rv_name(rv);
      break;
  }
  ++slot.state.errors;
  slot.state.last_error = r.message;
  return r;
}

SeedResult Sink::seed(size_t index, const uint8_t* data, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= slots_.size()) throw std::out_of_range("no PKCS#11 slot with index " + std::to_string(index));
  Slot& slot = slots_[index];
  if (slot.state.status == SlotStatus::Unsupported || slot.state.status == SlotStatus::LoginRefused) {
    SeedResult r;
    r.skipped = true;
    r.rv = slot.state.last_rv;
    r.message = slot_name(slot) + " is left alone (" + slot_status_name(slot.state.status) + ")";
    return r;
  }
  if (!slot.has_session) {
    ck::RV rv = open_slot(slot);
    if (classify(rv) == Verdict::SessionLost && rebind(slot)) rv = open_slot(slot);
    if (rv != ck::CKR_OK) return apply_locked(index, rv, size);
  }
  ck::RV rv;
  if (config_.mix_os_random) {
    std::vector<uint8_t> mixed(data, data + size);
    std::vector<uint8_t> local(size);
    size_t got = 0;
    while (got < size) {
      const ssize_t n = getrandom(local.data() + got, size - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
      got += size_t(n);
    }
    for (size_t i = 0; i < size; ++i) mixed[i] ^= local[i];
    rv = module_->seed_random(slot.session, mixed.data(), size);
    explicit_bzero(mixed.data(), size);
    explicit_bzero(local.data(), size);
  } else {
    rv = module_->seed_random(slot.session, data, size);
  }
  return apply_locked(index, rv, size);
}

std::vector<uint8_t> Sink::generate(size_t index, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = slots_.at(index);
  if (!slot.has_session) throw std::runtime_error(slot_name(slot) + " has no open session");
  std::vector<uint8_t> out(size);
  const ck::RV rv = module_->generate_random(slot.session, out.data(), size);
  if (rv != ck::CKR_OK) throw Pkcs11Error("C_GenerateRandom", rv, slot_name(slot));
  return out;
}

void Sink::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& s : slots_) drop_session(s);
}

}  // namespace qe::pkcs11
