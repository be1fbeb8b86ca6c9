// A loaded PKCS#11 module: dlopen, C_GetFunctionList, C_Initialize with OS locking, and
// thin checked wrappers for the calls the seeding sink makes. One module file is
// initialized once per process however many Module objects refer to it (a second
// C_Initialize would answer CKR_CRYPTOKI_ALREADY_INITIALIZED, and an early C_Finalize
// would pull the rug from under the other users); the last one out calls C_Finalize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkcs11/cryptoki.h"

namespace qe::pkcs11 {

// "CKR_RANDOM_SEED_NOT_SUPPORTED", ... or "CKR_VENDOR_DEFINED+0x..." / "CKR_0x...".
std::string rv_name(ck::RV rv);

// A call that did not return CKR_OK. what(): "C_SeedRandom: CKR_... (0x...)".
class Pkcs11Error : public std::runtime_error {
 public:
  Pkcs11Error(const std::string& function, ck::RV rv, const std::string& detail = "");
  ck::RV rv() const { return rv_; }
  const std::string& function() const { return function_; }

 private:
  std::string function_;
  ck::RV rv_;
};

// The module file could not be used at all (dlopen, missing C_GetFunctionList, ...).
class ModuleLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TokenInfo {
  ck::SLOT_ID slot = 0;
  std::string label;  // trailing blanks removed
  std::string manufacturer;
  std::string model;
  std::string serial;
  ck::FLAGS flags = 0;
  bool has_rng() const { return flags & ck::CKF_RNG; }
  bool login_required() const { return flags & ck::CKF_LOGIN_REQUIRED; }
};

// Removes the blank padding of a fixed-width Cryptoki text field.
std::string trim_padded(const unsigned char* field, size_t width);

class Module {
 public:
  // Throws ModuleLoadError or Pkcs11Error (from C_Initialize).
  explicit Module(const std::string& path);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& path() const { return path_; }
  std::string library_description() const;  // from C_GetInfo, "" when it fails

  // Slots with a token present and their token info. Slots whose token info cannot be
  // read (removed meanwhile) are skipped.
  std::vector<TokenInfo> tokens() const;
  // Slots whose token label equals `label` (compared without the blank padding).
  std::vector<ck::SLOT_ID> find_slots(const std::string& label) const;

  // Raw calls returning CK_RV, for the sink that decides what each code means.
  ck::RV open_session(ck::SLOT_ID slot, ck::SESSION_HANDLE* session) const;
  ck::RV close_session(ck::SESSION_HANDLE session) const;
  ck::RV login_user(ck::SESSION_HANDLE session, const std::string& pin) const;
  ck::RV seed_random(ck::SESSION_HANDLE session, const uint8_t* data, size_t size) const;
  ck::RV generate_random(ck::SESSION_HANDLE session, uint8_t* out, size_t size) const;

  struct Loaded;  // the process-wide, reference-counted dlopen + C_Initialize

 private:
  std::string path_;
  std::shared_ptr<Loaded> loaded_;
  const ck::FUNCTION_LIST* fn_ = nullptr;
};

}  // namespace qe::pkcs11
