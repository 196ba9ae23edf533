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
    }
}
