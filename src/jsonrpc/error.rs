//! The JSON-RPC error codes Gatehouse answers with, in one place.

/// An error code of a JSON-RPC error response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The message is not JSON (-32700).
    ParseError,
    /// JSON, but not a valid request: a batch, no method, an oversized message (-32600).
    InvalidRequest,
    /// An unknown method (-32601).
    MethodNotFound,
    /// Missing or malformed params, an unknown tool or prompt (-32602).
    InvalidParams,
    /// Gatehouse itself failed (-32603).
    InternalError,
    /// An unknown resource URI, as MCP up to 2025-11-25 numbers it (-32002).
    ResourceNotFound,
    /// Modern Streamable HTTP: a routing header disagrees with the body, or is missing (-32020).
    HeaderMismatch,
    /// A modern request needs a client capability its client did not declare (-32021).
    MissingRequiredClientCapability,
    /// A modern request in a protocol version we do not speak (-32022).
    UnsupportedProtocolVersion,
}

impl ErrorCode {
    /// The number on the wire.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_specifications() {
        assert_eq!(ErrorCode::ParseError.code(), -32700);
        assert_eq!(ErrorCode::InvalidRequest.code(), -32600);
        assert_eq!(ErrorCode::MethodNotFound.code(), -32601);
        assert_eq!(ErrorCode::InvalidParams.code(), -32602);
        assert_eq!(ErrorCode::InternalError.code(), -32603);
        assert_eq!(ErrorCode::ResourceNotFound.code(), -32002);
        assert_eq!(ErrorCode::HeaderMismatch.code(), -32020);
        assert_eq!(ErrorCode::MissingRequiredClientCapability.code(), -32021);
        assert_eq!(ErrorCode::UnsupportedProtocolVersion.code(), -32022);
    }
}
