//! The one way a verb asks the running hub: a control request, its answer read as `T`, an error
//! as the text the person reads.

use gatehouse::control::{ControlClient, Request};

/// Asks the hub `req`; its answer as `T`, or the error's text.
pub async fn ask<T: serde::de::DeserializeOwned>(
    client: &ControlClient,
    req: Request,
) -> Result<T, String> {
    client.request(&req).await.map_err(|e| e.to_string())
}
