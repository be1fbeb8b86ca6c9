// The PKCS#11 seeding sink: one session per slot whose token carries the configured
// label, logged in when a PIN is configured, fed with C_SeedRandom.
//
// What each answer means for a slot:
//   CKR_OK                               counted (calls, bytes)
//   CKR_RANDOM_SEED_NOT_SUPPORTED,
//   CKR_FUNCTION_NOT_SUPPORTED,
//   CKR_RANDOM_NO_RNG                    reported once, the slot is left alone afterwards
//   session/token gone (CKR_SESSION_*, CKR_DEVICE_REMOVED, CKR_TOKEN_NOT_PRESENT, ...)
//                                        the session is dropped and reopened on the next
//                                        seed (the token is looked up by label again)
//   PIN refused (CKR_PIN_*)              the slot is left alone: retrying a wrong PIN every
//                                        few seconds would lock the token
//   anything else                        counted as an error; the next seed tries again
// A module that misbehaves never takes the process down: every answer is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pkcs11/module.h"

namespace qe::pkcs11 {

struct SinkConfig {
  std::string module_path;
  std::string token_label;
  std::optional<std::string> pin;  // user PIN; wiped when the sink goes away
  bool mix_os_random = false;      // XOR each seed with getrandom(2) bytes first
};

enum class SlotStatus { Active, Reconnecting, Unsupported, LoginRefused };
const char* slot_status_name(SlotStatus s);  // "active", "reconnecting", "unsupported", "login-refused"

// How the sink treats one return value of C_SeedRandom / C_OpenSession / C_Login.
enum class Verdict { Ok, Unsupported, SessionLost, LoginRefused, Error };
Verdict classify(ck::RV rv);

struct SlotState {
  ck::SLOT_ID slot = 0;
  std::string label;
  SlotStatus status = SlotStatus::Active;
  uint64_t seed_calls = 0;     // C_SeedRandom calls that returned CKR_OK
  uint64_t bytes_seeded = 0;
  uint64_t errors = 0;
  ck::RV last_rv = ck::CKR_OK;
  std::string last_error;      // "" while nothing has gone wrong
};

struct SeedResult {
  bool ok = false;
  bool skipped = false;            // the slot is left alone (unsupported / PIN refused)
  bool newly_unsupported = false;  // this call found out: report it (once)
  ck::RV rv = ck::CKR_OK;
  std::string message;             // one line for the log when !ok
};

class Sink {
 public:
  // Loads the module, finds every slot whose token has the label, opens a session on
  // each and logs in when a PIN is set. Throws ModuleLoadError / Pkcs11Error, or
  // std::runtime_error naming the labels present when no token has the label.
  explicit Sink(SinkConfig config);
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  size_t slot_count() const;
  std::vector<SlotState> slots() const;

  // C_SeedRandom on slot `index` (0..slot_count-1). Never throws for module answers.
  SeedResult seed(size_t index, const uint8_t* data, size_t size);
  // Applies one answer of the module to slot `index` as seed() would (the state machine
  // alone, for answers a module with a present token cannot be made to give here).
  SeedResult apply(size_t index, ck::RV rv, size_t size);
  // C_GenerateRandom on slot `index` (lets tests prove the session is live).
  std::vector<uint8_t> generate(size_t index, size_t size);

  // Closes every session. The module is finalized when the last user of it goes away.
  void close();
  const std::string& module_path() const { return config_.module_path; }

 private:
  struct Slot {
    SlotState state;
    bool has_session = false;
    ck::SESSION_HANDLE session = 0;
    bool reported_unsupported = false;
  };
  SeedResult apply_locked(size_t index, ck::RV rv, size_t size);
  ck::RV open_slot(Slot& slot);  // open + login; returns the failing RV or CKR_OK
  void drop_session(Slot& slot);
  bool rebind(Slot& slot);        // find the label again after the token went away
  std::string slot_name(const Slot& slot) const;

  SinkConfig config_;
  std::unique_ptr<Module> module_;
  std::vector<Slot> slots_;
  mutable std::mutex mutex_;
};

}  // namespace qe::pkcs11
