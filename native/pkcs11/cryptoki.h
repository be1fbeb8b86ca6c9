// The few PKCS#11 (Cryptoki) declarations the seeding sink needs, written from the public
// OASIS specification "PKCS #11 Cryptographic Token Interface Base Specification
// Version 2.40" (§3 data types, §5.2 CK_FUNCTION_LIST, §5.1 return values). Only what is
// used is declared; the function list keeps every entry up to the last one we call, in
// the specification's order, because a module hands us a table and we index it by
// position. On Linux/Unix, Cryptoki structures use the platform's normal alignment and
// CK_ULONG is `unsigned long`.
#pragma once

namespace qe::pkcs11::ck {

using BYTE = unsigned char;
using ULONG = unsigned long;
using RV = ULONG;
using FLAGS = ULONG;
using SLOT_ID = ULONG;
using SESSION_HANDLE = ULONG;
using USER_TYPE = ULONG;
using BBOOL = BYTE;
using UTF8CHAR = BYTE;
using NOTIFY = RV (*)(SESSION_HANDLE, ULONG, void*);

inline constexpr BBOOL TRUE_ = 1;
inline constexpr BBOOL FALSE_ = 0;

struct VERSION {
  BYTE major;
  BYTE minor;
};

// §3.1 CK_INFO (C_GetInfo).
struct INFO {
  VERSION cryptokiVersion;
  UTF8CHAR manufacturerID[32];
  FLAGS flags;
  UTF8CHAR libraryDescription[32];
  VERSION libraryVersion;
};

// §3.2 CK_TOKEN_INFO. Text fields are blank padded, not NUL terminated.
struct TOKEN_INFO {
  UTF8CHAR label[32];
  UTF8CHAR manufacturerID[32];
  UTF8CHAR model[16];
  BYTE serialNumber[16];
  FLAGS flags;
  ULONG ulMaxSessionCount;
  ULONG ulSessionCount;
  ULONG ulMaxRwSessionCount;
  ULONG ulRwSessionCount;
  ULONG ulMaxPinLen;
  ULONG ulMinPinLen;
  ULONG ulTotalPublicMemory;
  ULONG ulFreePublicMemory;
  ULONG ulTotalPrivateMemory;
  ULONG ulFreePrivateMemory;
  VERSION hardwareVersion;
  VERSION firmwareVersion;
  BYTE utcTime[16];
};

// §3.6 CK_C_INITIALIZE_ARGS.
struct C_INITIALIZE_ARGS {
  RV (*CreateMutex)(void** mutex);
  RV (*DestroyMutex)(void* mutex);
  RV (*LockMutex)(void* mutex);
  RV (*UnlockMutex)(void* mutex);
  FLAGS flags;
  void* pReserved;
};

// Flags.
inline constexpr FLAGS CKF_OS_LOCKING_OK = 0x00000002UL;       // C_INITIALIZE_ARGS
inline constexpr FLAGS CKF_RNG = 0x00000001UL;                 // TOKEN_INFO
inline constexpr FLAGS CKF_LOGIN_REQUIRED = 0x00000004UL;      // TOKEN_INFO
inline constexpr FLAGS CKF_USER_PIN_INITIALIZED = 0x00000008UL;
inline constexpr FLAGS CKF_TOKEN_INITIALIZED = 0x00000400UL;
inline constexpr FLAGS CKF_RW_SESSION = 0x00000002UL;          // C_OpenSession
inline constexpr FLAGS CKF_SERIAL_SESSION = 0x00000004UL;
inline constexpr USER_TYPE CKU_USER = 1;

// Return values (§5.1, the ones a seeder can meet or wants to name).
inline constexpr RV CKR_OK = 0x000;
inline constexpr RV CKR_CANCEL = 0x001;
inline constexpr RV CKR_HOST_MEMORY = 0x002;
inline constexpr RV CKR_SLOT_ID_INVALID = 0x003;
inline constexpr RV CKR_GENERAL_ERROR = 0x005;
inline constexpr RV CKR_FUNCTION_FAILED = 0x006;
inline constexpr RV CKR_ARGUMENTS_BAD = 0x007;
inline constexpr RV CKR_NO_EVENT = 0x008;
inline constexpr RV CKR_NEED_TO_CREATE_THREADS = 0x009;
inline constexpr RV CKR_CANT_LOCK = 0x00A;
inline constexpr RV CKR_DATA_INVALID = 0x020;
inline constexpr RV CKR_DATA_LEN_RANGE = 0x021;
inline constexpr RV CKR_DEVICE_ERROR = 0x030;
inline constexpr RV CKR_DEVICE_MEMORY = 0x031;
inline constexpr RV CKR_DEVICE_REMOVED = 0x032;
inline constexpr RV CKR_FUNCTION_CANCELED = 0x050;
inline constexpr RV CKR_FUNCTION_NOT_PARALLEL = 0x051;
inline constexpr RV CKR_FUNCTION_NOT_SUPPORTED = 0x054;
inline constexpr RV CKR_OPERATION_ACTIVE = 0x090;
inline constexpr RV CKR_OPERATION_NOT_INITIALIZED = 0x091;
inline constexpr RV CKR_PIN_INCORRECT = 0x0A0;
inline constexpr RV CKR_PIN_INVALID = 0x0A1;
inline constexpr RV CKR_PIN_LEN_RANGE = 0x0A2;
inline constexpr RV CKR_PIN_EXPIRED = 0x0A3;
inline constexpr RV CKR_PIN_LOCKED = 0x0A4;
inline constexpr RV CKR_SESSION_CLOSED = 0x0B0;
inline constexpr RV CKR_SESSION_COUNT = 0x0B1;
inline constexpr RV CKR_SESSION_HANDLE_INVALID = 0x0B3;
inline constexpr RV CKR_SESSION_PARALLEL_NOT_SUPPORTED = 0x0B4;
inline constexpr RV CKR_SESSION_READ_ONLY = 0x0B5;
inline constexpr RV CKR_SESSION_EXISTS = 0x0B6;
inline constexpr RV CKR_TOKEN_NOT_PRESENT = 0x0E0;
inline constexpr RV CKR_TOKEN_NOT_RECOGNIZED = 0x0E1;
inline constexpr RV CKR_TOKEN_WRITE_PROTECTED = 0x0E2;
inline constexpr RV CKR_USER_ALREADY_LOGGED_IN = 0x100;
inline constexpr RV CKR_USER_NOT_LOGGED_IN = 0x101;
inline constexpr RV CKR_USER_PIN_NOT_INITIALIZED = 0x102;
inline constexpr RV CKR_USER_TYPE_INVALID = 0x103;
inline constexpr RV CKR_USER_ANOTHER_ALREADY_LOGGED_IN = 0x104;
inline constexpr RV CKR_USER_TOO_MANY_TYPES = 0x105;
inline constexpr RV CKR_RANDOM_SEED_NOT_SUPPORTED = 0x120;
inline constexpr RV CKR_RANDOM_NO_RNG = 0x121;
inline constexpr RV CKR_BUFFER_TOO_SMALL = 0x150;
inline constexpr RV CKR_CRYPTOKI_NOT_INITIALIZED = 0x190;
inline constexpr RV CKR_CRYPTOKI_ALREADY_INITIALIZED = 0x191;
inline constexpr RV CKR_MUTEX_BAD = 0x1A0;
inline constexpr RV CKR_MUTEX_NOT_LOCKED = 0x1A1;
inline constexpr RV CKR_FUNCTION_REJECTED = 0x200;
inline constexpr RV CKR_VENDOR_DEFINED = 0x80000000UL;

// The entries we call, with their specification signatures.
using Fn_C_Initialize = RV (*)(void* pInitArgs);
using Fn_C_Finalize = RV (*)(void* pReserved);
using Fn_C_GetInfo = RV (*)(INFO* pInfo);
using Fn_C_GetSlotList = RV (*)(BBOOL tokenPresent, SLOT_ID* pSlotList, ULONG* pulCount);
using Fn_C_GetTokenInfo = RV (*)(SLOT_ID slotID, TOKEN_INFO* pInfo);
using Fn_C_OpenSession = RV (*)(SLOT_ID slotID, FLAGS flags, void* pApplication, NOTIFY Notify,
                                SESSION_HANDLE* phSession);
using Fn_C_CloseSession = RV (*)(SESSION_HANDLE hSession);
using Fn_C_Login = RV (*)(SESSION_HANDLE hSession, USER_TYPE userType, UTF8CHAR* pPin, ULONG ulPinLen);
using Fn_C_SeedRandom = RV (*)(SESSION_HANDLE hSession, BYTE* pSeed, ULONG ulSeedLen);
using Fn_C_GenerateRandom = RV (*)(SESSION_HANDLE hSession, BYTE* pRandomData, ULONG ulRandomLen);
// Entries we never call keep their slot in the table.
using Fn_unused = RV (*)();

// §5.2 CK_FUNCTION_LIST, up to and including C_GenerateRandom; the three entries after
// it (C_GetFunctionStatus, C_CancelFunction, C_WaitForSlotEvent) are left out because we
// only ever read through a pointer the module gives us and never past C_GenerateRandom.
struct FUNCTION_LIST {
  VERSION version;
  Fn_C_Initialize C_Initialize;
  Fn_C_Finalize C_Finalize;
  Fn_C_GetInfo C_GetInfo;
  Fn_unused C_GetFunctionList;
  Fn_C_GetSlotList C_GetSlotList;
  Fn_unused C_GetSlotInfo;
  Fn_C_GetTokenInfo C_GetTokenInfo;
  Fn_unused C_GetMechanismList;
  Fn_unused C_GetMechanismInfo;
  Fn_unused C_InitToken;
  Fn_unused C_InitPIN;
  Fn_unused C_SetPIN;
  Fn_C_OpenSession C_OpenSession;
  Fn_C_CloseSession C_CloseSession;
  Fn_unused C_CloseAllSessions;
  Fn_unused C_GetSessionInfo;
  Fn_unused C_GetOperationState;
  Fn_unused C_SetOperationState;
  Fn_C_Login C_Login;
  Fn_unused C_Logout;
  Fn_unused C_CreateObject;
  Fn_unused C_CopyObject;
  Fn_unused C_DestroyObject;
  Fn_unused C_GetObjectSize;
  Fn_unused C_GetAttributeValue;
  Fn_unused C_SetAttributeValue;
  Fn_unused C_FindObjectsInit;
  Fn_unused C_FindObjects;
  Fn_unused C_FindObjectsFinal;
  Fn_unused C_EncryptInit;
  Fn_unused C_Encrypt;
  Fn_unused C_EncryptUpdate;
  Fn_unused C_EncryptFinal;
  Fn_unused C_DecryptInit;
  Fn_unused C_Decrypt;
  Fn_unused C_DecryptUpdate;
  Fn_unused C_DecryptFinal;
  Fn_unused C_DigestInit;
  Fn_unused C_Digest;
  Fn_unused C_DigestUpdate;
  Fn_unused C_DigestKey;
  Fn_unused C_DigestFinal;
  Fn_unused C_SignInit;
  Fn_unused C_Sign;
  Fn_unused C_SignUpdate;
  Fn_unused C_SignFinal;
  Fn_unused C_SignRecoverInit;
  Fn_unused C_SignRecover;
  Fn_unused C_VerifyInit;
  Fn_unused C_Verify;
  Fn_unused C_VerifyUpdate;
  Fn_unused C_VerifyFinal;
  Fn_unused C_VerifyRecoverInit;
  Fn_unused C_VerifyRecover;
  Fn_unused C_DigestEncryptUpdate;
  Fn_unused C_DecryptDigestUpdate;
  Fn_unused C_SignEncryptUpdate;
  Fn_unused C_DecryptVerifyUpdate;
  Fn_unused C_GenerateKey;
  Fn_unused C_GenerateKeyPair;
  Fn_unused C_WrapKey;
  Fn_unused C_UnwrapKey;
  Fn_unused C_DeriveKey;
  Fn_C_SeedRandom C_SeedRandom;
  Fn_C_GenerateRandom C_GenerateRandom;
};

using Fn_C_GetFunctionList = RV (*)(FUNCTION_LIST** ppFunctionList);

}  // namespace qe::pkcs11::ck
